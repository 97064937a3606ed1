from .rect import Rectangel
Rectangle = Rectangel
