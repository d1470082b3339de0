"""Lesson 1, "Why a step costs what it costs": the floor, the slope and the ridge of a step."""
