"""Benchmarks: commands that print figures for kafkalite and Tansu side by side."""
