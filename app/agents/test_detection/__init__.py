"""How a workspace's tests are found, per ecosystem; `app/agents/test_command.py` puts the rules in order."""
