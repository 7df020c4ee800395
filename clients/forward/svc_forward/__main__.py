import sys

from svc_forward import main

sys.exit(main())
