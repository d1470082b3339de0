"""The class quiz: open a room for a lesson (the instructor), or join one with a code and a
nickname (a student); rooms, rounds and answers live in the progress database (ui/classroom.py,
lessons/quiz/rooms.py)."""

from ui import classroom

classroom.page()
