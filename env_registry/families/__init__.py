"""One module per environment family; each exposes SPECS, a list of EnvSpec."""
