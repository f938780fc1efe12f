"""The REPL's questions to the user: numbered choices, permission dialogs, tool forms, start-up questions."""
