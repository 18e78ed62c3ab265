"""Audit three accountants on the noise of 1,000 DP-SGD steps (Poisson rate 0.01, noise
multiplier 1): each claim about delta(eps) is checked against bounds on the true delta(eps)
from 50,000 privacy-loss samples per order, simultaneous at 95% over the three eps.

    pip install ".[accountants]"
    python examples/accountant-dpsgd.py

A progress bar goes to stderr; the run time grows linearly with ``trials``. The output is shown,
and read, in docs/guide/accountant.md.
"""

import dpaudit as dpa

base = dpa.mechanisms.PoissonSubsampled(dpa.mechanisms.Gaussian(sigma=1.0), rate=0.01)
mech = dpa.mechanisms.Composed(base, times=1000)

check = dpa.audit_accountant(
    mech,
    ["dpaudit:pld", "dp_accounting:pld", "dp_accounting:rdp"],
    trials=50_000,
    epsilons=[0.5, 1.0, 2.0],
    seed=0,
    progress=True,
)
print(check)
