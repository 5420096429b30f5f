"""selective_build: which operators and dtypes a set of programs needs, and whether a build provides them."""
