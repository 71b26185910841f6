"""pycrate code generated from e2sm/asn1/*.asn (see e2sm/regen_asn1.py)."""
