"""A scripted model server per test, for the judges a regrade asks again (see judge_support)."""

from judge_support import model_server  # noqa: F401 - the fixture
