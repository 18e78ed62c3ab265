"""Integrations with training libraries, each behind its own optional extra.

``dpaudit.integrations.opacus`` (extra ``dpaudit[opacus]``) imports PyTorch; nothing else in
dpaudit does, and ``import dpaudit`` never imports this package's modules.
"""
