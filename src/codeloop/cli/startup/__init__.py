"""Start-up: flags parsed, resolved once into typed options, checked; the session assembled."""
