from accel_lint.cli import run

run()
