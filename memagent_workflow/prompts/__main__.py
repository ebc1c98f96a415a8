"""``python -m memagent_workflow.prompts``: the built-in prompts as a file to edit."""

from memagent_workflow.prompts import main

main()
