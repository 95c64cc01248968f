"""Who is asking and what they may do: `users.py` finds the user (identity headers, tokens,
groups), `identity/access.py` is the one authorization door."""
