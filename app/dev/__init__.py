"""Development launchers: the service on embedded defaults (`python -m app.dev`).

Development only: the embedded MongoDB (nx-27017) and the embedded model (llama-cpp-python) as
loopback child processes, and the model's installer. Production modules never import this package
(`tests/dev/test_production_imports.py` checks it); the tests and benchmarks use it freely.
"""
