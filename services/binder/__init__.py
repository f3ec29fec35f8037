"""The binder: the single committer of placements (leader + standbys). Its decisions are in `core`."""
