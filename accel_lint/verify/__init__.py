"""`accel-lint verify`: run the original and the fixed training script side by
side and show that each fix computes the same thing, and how fast.

The parent process (this package, except `runner/`) never imports torch;
`runner/` runs inside the script's processes, loaded by `hook/sitecustomize.py`.
How it works: docs/verifier.md.
"""
