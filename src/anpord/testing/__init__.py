"""Test doubles that are real components: ``model_server`` is a scripted OpenAI-compatible HTTP
server on 127.0.0.1 for tests and benchmarks of model agents and judges."""
