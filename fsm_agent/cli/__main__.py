"""`python -m fsm_agent.cli`: the `fsm-agent` command."""

from fsm_agent.cli.main import main

main()
