"""Private support shared by every layer: input validation, durable files, thread policy,
optional imports, the task executor and the command-line helpers. Not public API."""
