"""Agent RL Harness."""

import os

# OpenMP threads (torch on the CPU) sleep rather than spin while they wait for work. The
# harness runs many processes side by side (test workers, Ray actors, sandboxes), and spinning
# threads starve them: a tiny-model training step took 2.6x as long with them spinning, on 2
# cores shared with 4 busy processes, and the same time on idle cores. Read when torch loads,
# so it holds for code that imports the harness first; a value the user set is kept.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
