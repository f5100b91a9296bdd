"""matplotlib, the plots extra (gemmlab[plots]): the figure modules import it from here, so that where it is not
installed a command that draws a figure stops with the install command before any work, and the tables, which
need none of it, still render."""
try:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
except ImportError:
    from gemmlab.errors import MissingDependencyError

    raise MissingDependencyError("this figure needs matplotlib, which is not installed: "
                                 "python3 -m pip install 'gemmlab[plots]'") from None

__all__ = ["Figure", "FigureCanvasAgg"]
