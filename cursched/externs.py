"""The extern names, for ``from cursched.externs import expf, select, inf``.

Inside a proc the externs are built in; importing them only helps editors and linters. The
names are defined in ``cursched.frontend.externs`` (the frontend resolves calls through
them); this module re-exports exactly its ``__all__``.
"""

from cursched.frontend.externs import *  # noqa: F403
from cursched.frontend.externs import __all__ as __all__
