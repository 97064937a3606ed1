#!/bin/bash
set -e
printf '#!/bin/bash\nif grep -q ERROR /app/input.txt; then exit 1; fi\nexit 0\n' > /app/check.sh
