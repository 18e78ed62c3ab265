"""The Monte Carlo engine, empirical trade-off curves, confidence bands, lower bounds, verdicts."""
