"""XP and progress rules, as a plain object the app keeps in session state.

Rules: +10 XP for each question answered correctly (once per question, however many tries),
+25 for a perfect quiz (every question right at the first try), +50 for finishing a lesson
(every question answered correctly and every exercise solved once). Each award has a key and is
given at most once, so reruns, repeated clicks and redrawn exercises cannot farm XP.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lessons.quiz.bank import XP_PER_QUESTION, Bank
from lessons.quiz.exercise import XP_PER_EXERCISE, Drawn, ExerciseSpec

XP_PERFECT_QUIZ = 25
XP_LESSON_DONE = 50
XP_RULES = {
    "xp_question": XP_PER_QUESTION,
    "xp_perfect": XP_PERFECT_QUIZ,
    "xp_exercise": XP_PER_EXERCISE,
    "xp_lesson": XP_LESSON_DONE,
}


@dataclass(frozen=True)
class Feedback:
    """What a learner sees after checking an answer."""

    correct: bool
    explanation: str
    xp_gained: int


@dataclass
class Progress:
    """A learner's XP, awards and answer history (mutable; one per browser session)."""

    xp: int = 0
    awarded: set[str] = field(default_factory=set)
    tries: dict[str, list[bool]] = field(default_factory=dict)
    feedback: dict[str, Feedback] = field(default_factory=dict)

    def _award(self, key: str, xp: int) -> int:
        if key in self.awarded:
            return 0
        self.awarded.add(key)
        self.xp += xp
        return xp

    @staticmethod
    def question_key(lesson: str, question_id: str) -> str:
        return f"q:{lesson}:{question_id}"

    @staticmethod
    def exercise_key(lesson: str, exercise_id: str) -> str:
        return f"ex:{lesson}:{exercise_id}"

    @staticmethod
    def perfect_key(lesson: str) -> str:
        return f"perfect:{lesson}"

    @staticmethod
    def lesson_key(lesson: str) -> str:
        return f"lesson:{lesson}"

    def answer_question(self, bank: Bank, question_id: str, choice: str | None) -> Feedback:
        """Grade one answer, record it and award what it earns."""
        q = bank.question(question_id)
        key = self.question_key(bank.lesson, question_id)
        correct = choice == q.correct_choice
        self.tries.setdefault(key, []).append(correct)
        gained = self._award(key, q.xp) if correct else 0
        if correct:
            gained += self._maybe_perfect(bank)
        fb = Feedback(correct=correct, explanation=q.explanation, xp_gained=gained)
        self.feedback[key] = fb
        return fb

    def answer_exercise(
        self, lesson: str, spec: ExerciseSpec, drawn: Drawn, value: float | None
    ) -> Feedback:
        """Check a numeric answer against the simulator's; the first solve earns the XP."""
        key = self.exercise_key(lesson, spec.id)
        correct = drawn.is_correct(value)
        self.tries.setdefault(key, []).append(correct)
        gained = self._award(key, spec.xp) if correct else 0
        fb = Feedback(correct=correct, explanation=drawn.solution, xp_gained=gained)
        self.feedback[key] = fb
        return fb

    def _maybe_perfect(self, bank: Bank) -> int:
        keys = [self.question_key(bank.lesson, q.id) for q in bank.questions]
        if all((self.tries.get(k) or [False])[0] for k in keys):
            return self._award(self.perfect_key(bank.lesson), XP_PERFECT_QUIZ)
        return 0

    def lesson_status(self, bank: Bank, exercises: tuple[ExerciseSpec, ...] = ()) -> dict:
        """Counts for the progress page: questions right, exercises solved, finished or not."""
        right = sum(self.question_key(bank.lesson, q.id) in self.awarded for q in bank.questions)
        solved = sum(self.exercise_key(bank.lesson, e.id) in self.awarded for e in exercises)
        return {
            "questions": len(bank.questions),
            "correct": right,
            "exercises": len(exercises),
            "solved": solved,
            "perfect": self.perfect_key(bank.lesson) in self.awarded,
            "finished": self.lesson_key(bank.lesson) in self.awarded,
        }

    def recheck_bonuses(self, bank: Bank, exercises: tuple[ExerciseSpec, ...] = ()) -> int:
        """Award the perfect-quiz and lesson bonuses if earned (after loading saved progress)."""
        return self._maybe_perfect(bank) + self.maybe_finish_lesson(bank, exercises)

    def maybe_finish_lesson(self, bank: Bank, exercises: tuple[ExerciseSpec, ...] = ()) -> int:
        """Award the lesson bonus once every question and exercise is done."""
        status = self.lesson_status(bank, exercises)
        if status["correct"] == status["questions"] and status["solved"] == status["exercises"]:
            return self._award(self.lesson_key(bank.lesson), XP_LESSON_DONE)
        return 0
