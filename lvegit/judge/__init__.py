"""Judging recorded instances offline: validate, replay (conversations and checkers), check (both in
one pass), the verdict cache and the result records every renderer reads."""
