"""chaoseval's first-party perturbation plugins.

Each module registers one plugin with ``@perturbation(name)`` and is also listed in the
``chaoseval.perturbations`` entry-point group of pyproject.toml, exactly as a third-party
package would list its own.
"""
