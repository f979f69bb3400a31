"""The Hearthside icon, drawn at run time so the app ships no binary art it cannot rebuild."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QIcon, QPainter, QPainterPath, QPen, QPixmap

#: The tray icon's states (see :func:`tray_icon`).
NORMAL, REVIEW, PAUSED, ERROR = "normal", "review", "paused", "error"


def hearth_pixmap(size: int = 64, badge: bool = False, state: str = NORMAL, count: int = 0) -> QPixmap:
    """A warm rounded square with a flame, always ``size`` pixels square.

    ``badge`` adds a red dot; ``state`` REVIEW draws a red badge with ``count`` in it, ERROR an
    amber badge with "!", PAUSED greys the flame and draws pause bars. The badge sits inside
    the icon's square, so the icon never changes size in the tray.
    """
    paused = state == PAUSED
    pm = QPixmap(size, size)
    pm.fill(Qt.GlobalColor.transparent)
    p = QPainter(pm)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    s = float(size)
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(QBrush(QColor("#5b5b5b" if paused else "#7a2e12")))
    p.drawRoundedRect(QRectF(s * 0.04, s * 0.04, s * 0.92, s * 0.92), s * 0.2, s * 0.2)
    flame = QPainterPath()
    flame.moveTo(QPointF(s * 0.5, s * 0.14))
    flame.cubicTo(QPointF(s * 0.78, s * 0.42), QPointF(s * 0.80, s * 0.60), QPointF(s * 0.72, s * 0.74))
    flame.cubicTo(QPointF(s * 0.64, s * 0.88), QPointF(s * 0.36, s * 0.88), QPointF(s * 0.28, s * 0.74))
    flame.cubicTo(QPointF(s * 0.20, s * 0.60), QPointF(s * 0.26, s * 0.44), QPointF(s * 0.5, s * 0.14))
    p.setBrush(QBrush(QColor("#b8b8b8" if paused else "#ffb347")))
    p.drawPath(flame)
    inner = QPainterPath()
    inner.moveTo(QPointF(s * 0.5, s * 0.42))
    inner.cubicTo(QPointF(s * 0.64, s * 0.58), QPointF(s * 0.64, s * 0.78), QPointF(s * 0.5, s * 0.80))
    inner.cubicTo(QPointF(s * 0.36, s * 0.78), QPointF(s * 0.36, s * 0.58), QPointF(s * 0.5, s * 0.42))
    p.setBrush(QBrush(QColor("#e6e6e6" if paused else "#fff3c4")))
    p.drawPath(inner)
    p.setBrush(QBrush(QColor("#5a1f0a")))
    p.drawRoundedRect(QRectF(s * 0.2, s * 0.82, s * 0.6, s * 0.08), s * 0.03, s * 0.03)
    if paused:
        p.setBrush(QBrush(QColor("#303030")))
        p.drawRect(QRectF(s * 0.38, s * 0.46, s * 0.08, s * 0.26))
        p.drawRect(QRectF(s * 0.54, s * 0.46, s * 0.08, s * 0.26))
    if badge and state == NORMAL:
        p.setBrush(QBrush(QColor("#e0245e")))
        p.drawEllipse(QRectF(s * 0.62, s * 0.0, s * 0.38, s * 0.38))
    if state in (REVIEW, ERROR):
        text = "!" if state == ERROR else (str(count) if count < 10 else "9+")
        d = s * 0.56
        box = QRectF(s - d, 0.0, d, d)
        p.setBrush(QBrush(QColor("#f0a000" if state == ERROR else "#e0245e")))
        p.setPen(QPen(QColor("#ffffff"), max(1.0, s / 32)))
        p.drawEllipse(box.adjusted(0.5, 0.5, -0.5, -0.5))
        font = QFont()
        font.setBold(True)
        font.setPixelSize(max(6, int(d * (0.72 if len(text) == 1 else 0.55))))
        p.setFont(font)
        p.setPen(QColor("#000000" if state == ERROR else "#ffffff"))
        p.drawText(box, Qt.AlignmentFlag.AlignCenter, text)
    p.end()
    return pm


def hearth_icon(badge: bool = False, state: str = NORMAL, count: int = 0) -> QIcon:
    icon = QIcon()
    for size in (16, 22, 24, 32, 48, 64, 128):
        icon.addPixmap(hearth_pixmap(size, badge, state, count))
    return icon
