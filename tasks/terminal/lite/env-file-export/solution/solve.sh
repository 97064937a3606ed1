#!/bin/bash
set -e
printf '#!/bin/bash\nset -a\n. /app/.env\nset +a\nexec python3 /app/show.py\n' > /app/run.sh && chmod +x /app/run.sh
