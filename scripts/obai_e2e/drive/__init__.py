"""drive"""
