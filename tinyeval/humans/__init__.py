"""humans"""
