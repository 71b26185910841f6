"""How octoric's parts run together: the embedded deployment behind ``octoric run``."""
