from accel_lint.cli import main

main()
