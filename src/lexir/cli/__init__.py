"""The `lexir` command: a thin layer over the API (main.py registers the verbs; history, serve, answer,
train and scale add theirs)."""
