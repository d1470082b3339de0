"""Lesson 2, "One token budget": how many tokens each request still needs, one budget a step."""
