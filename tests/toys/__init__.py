"""Toys that a contributor could write outside the library: each file registers one algorithm
through its dimension's public registration alone (no library file touched), in a
``register()`` function that tests/test_registration.py calls and then undoes."""
