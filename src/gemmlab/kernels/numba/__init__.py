"""Python kernels written with numba-cuda.

numba reads NUMBA_ENABLE_CUDASIM once, when numba.cuda is first imported, for the whole process. Importing this
package (which the registry does only when a numba kernel is asked for) therefore decides first: on a machine
without a usable GPU, and when the caller has not imported numba.cuda already, it sets the switch so that these
kernels run under numba's CUDA simulator. A caller's own numba.cuda code in the same process then runs on the
simulator too; set NUMBA_ENABLE_CUDASIM yourself before importing gemmlab to decide otherwise.
"""
from gemmlab.device import configure_numba

configure_numba()
