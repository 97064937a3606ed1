import sys
sys.path.insert(0, '/app')
from shapes import Rectangle
print('area', Rectangle(3, 4).area())
