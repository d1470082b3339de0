"""The quiz engine shared by every lesson: question banks, exercises, grading and XP rules."""
