"""(being written)"""
SPECS: list = []
