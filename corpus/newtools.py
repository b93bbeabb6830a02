"""The four tools that use JVMPI beyond one agent (filled in below)."""
BUILDS = []
RUNS = []
JAVAC = {}
JAVAC_CHECKS = {}
OWN_RUNNERS = {}
NAMES = {}
RECIPES = {}
