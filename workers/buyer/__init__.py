"""The buyer's client: what a procurement team runs (`benchctl submit`, `status`, `results`,
`compare`, `leaderboard`, `verify`, `trust`): the REST API read and written with a user's
token, and certificates checked offline against a pinned key."""
