"""Test helpers shared by the pytest suites (fixtures live in tests/conftest.py)."""
