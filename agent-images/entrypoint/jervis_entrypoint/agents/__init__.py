"""The command line of each coding agent (one module per agent) and how it is invoked (`invocation`)."""
