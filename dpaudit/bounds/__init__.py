"""Theory only: trade-off curves, privacy loss distributions, RDP/zCDP and (eps, delta) theorems."""
