import os
print(os.environ['DB_HOST'], os.environ['DB_PORT'])
