"""Every differentiable primitive, defined once with forward and backward side by side.

DESIGN.md names a single functions.py with sections; it is a package here with one module per
section (elementwise, reduce, movement, linalg, index) so each stays readable on its own.
"""
