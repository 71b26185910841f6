"""``octoric testbed``: octoric against a real srsRAN gNB on this machine (docs/testbed.md)."""
