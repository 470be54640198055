"""The bundled library: scenarios/ and perturbations/ at the repository root, installed here.

See pyproject.toml ([tool.setuptools.package-dir]) for the mapping.
"""
