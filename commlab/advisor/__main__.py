"""``python -m commlab.advisor``: measure the convergence penalties again and rewrite the table."""
from .penalties import PATH, write

print(write().to_string())
print(f"wrote {PATH}")
