"""Lesson 4, "Choosing the budget": the step time and the first-token time one budget buys."""
