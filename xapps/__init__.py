"""xapps."""
