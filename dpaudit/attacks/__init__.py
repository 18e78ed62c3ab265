"""Score functions: larger means "the output came from D_prime"."""
