# `compile` of another library, and Python's builtin: not reported.
import re

from mylib import compile as compile_model

pattern = re.compile(r"\d+", re.IGNORECASE)
code = compile("x = 1", "<string>", "exec")
model = compile_model(object(), "reduce-overhead")
