"""The interactive front end: the terminal session, its rendering, keys and dialogs."""
