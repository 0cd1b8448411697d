"""Terminal client that plays the Kotlin server's role: `python -m app.cli` (or `scripts/jervis`).

It places a repository under the service's DATA_ROOT, sends the request exactly as Kotlin does,
follows the run live (SSE, with `/status` polling and a local push receiver as fallbacks),
answers questions and approval gates from the terminal, and brings the resulting branch back.
"""
